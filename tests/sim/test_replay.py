"""Replay checks a witness against its claim (sim.conjectures.replay): the schema on load, the mask, the head count and
every hypothesis of the claim on the witness's own P, U and y0 (issue 36 item 4, issue 37 item 2); and the start is
measured from the certified zero's enclosure, not from the chart centre.

Each refusal has its negative control: the same file unmodified replays (exit 0), or the forged instance is shown to
be a certified attractor, so that only the new check refuses it.
"""

import dataclasses
import inspect
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim.__main__ import main
from sim.conjectures.certify import AWAY, EVIDENCE, EVIDENCE_HORIZON
from sim.conjectures.families import FAMILIES, certified_top
import sim.conjectures.replay as replay_module
from sim.conjectures.replay import (ENTRY_MAX, MAX_BYTES, P_NORM_MAX, _known, _one_line, _problem,
                                    certificate_differences, draft, load, make_witness, mismatches, replay,
                                    strict_numbers, witness_certificate)
from sim.conjectures.validated import TIGHT_RADII, Problem, certify, start_distance

STORED = sorted(p for p in (Path(__file__).parents[2] / "sim" / "conjectures" / "witnesses").glob("*/*.json")
                if p.name != "index.json")
#: A search's former witness of conj.multihead-causal (chunk 0 of a random search, once stored): its start lies in
#: D^l(v) but outside the certified ball, its attractor has a token at -v (outside D^l(v)); only float64 runs link
#: the two, so it is evidence, not a witness.
FLOAT64_ONLY_WITNESS = Path(__file__).parent / "data" / "float64-evidence" / "multihead-causal-l2-d2-h3.json"


def stored(claim: str, index: int = 0) -> dict:
    return json.loads([p for p in STORED if p.parent.name == claim][index].read_text())


def instance(witness: dict) -> dict:
    """The witness without its stored certificate block (a draft): for tests that change how the instance is judged
    (a family's distance, a margin, the runs' ends), whose replay then establishes another block."""
    return {key: value for key, value in witness.items() if key != "certificate"}


def replay_file(tmp_path, witness, capsys, raw: str | None = None) -> tuple[int, str, Path]:
    """``python -m sim replay`` on ``witness`` (or on the text ``raw``): (exit code, stderr, path)."""
    path = tmp_path / "witness.json"
    path.write_text(raw if raw is not None else json.dumps(witness))
    code = main(["replay", str(path)])
    return code, capsys.readouterr().err, path


def assert_refused(code: int, err: str, path: Path, *words: str) -> None:
    """Exit 2, one line naming the file, no traceback, and the words saying what failed."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path) in lines[0], err
    for word in words:
        assert word in lines[0], err


def test_unmodified_stored_witness_replays_from_a_copied_file(tmp_path, capsys):
    """Negative control of every refusal below: a stored witness copied verbatim exits 0 (REFUTED)."""
    code, _, _ = replay_file(tmp_path, stored("conj.value-full"), capsys)
    assert code == 0


# --- the three forged witnesses of issue 36, and issue 37's relabelled one ------------------------------------------
def test_value_full_witness_relabelled_as_value_causal_is_refused(tmp_path, capsys):
    """Full attention presented for a causal claim: the mask differs from the claim family's."""
    forged = dict(stored("conj.value-full"), claim="conj.value-causal")
    assert not replay(forged).refuted
    assert_refused(*replay_file(tmp_path, forged, capsys), "mask", "causal")


def test_causal_witness_relabelled_as_value_full_is_refused(tmp_path, capsys):
    forged = dict(stored("conj.value-causal"), claim="conj.value-full")
    assert_refused(*replay_file(tmp_path, forged, capsys), "mask")


def test_gradient_value_witness_with_a_causal_mask_is_refused(tmp_path, capsys):
    forged = dict(stored("conj.gradient-value"), causal=True)
    assert_refused(*replay_file(tmp_path, forged, capsys), "mask")


def test_nonsymmetric_full_witness_with_a_symmetric_P_is_refused(tmp_path, capsys):
    """The rotating triangle with P = -2I (symmetric): still a certified attractor (the control: the certifier alone
    accepts it, as it did before), refused only because the claim is about non-symmetric P."""
    witness = stored("conj.nonsymmetric-full")
    assert witness["generator"] is not None  # the rotating triangle
    forged = dict(witness, P=[(-2.0 * np.eye(2)).tolist()])
    assert certify(_problem(forged), np.asarray(forged["equilibrium"])).certified
    assert not replay(forged).refuted
    assert_refused(*replay_file(tmp_path, forged, capsys), "symmetric")


@pytest.mark.parametrize("source, target, words", [
    pytest.param("conj.value-full", "conj.gradient-value", ("U != P",), id="value-full to gradient-value (U != P)"),
    pytest.param("conj.value-full", "conj.nonsymmetric-full", ("U != I",), id="value-full to nonsymmetric (U != I)"),
    pytest.param("conj.multihead-causal", "conj.value-causal", ("h = ",), id="3 heads to a one-head claim"),
    pytest.param("conj.value-causal", "conj.multihead-causal", ("h = 1",), id="1 head to a multi-head claim"),
])
def test_a_witness_moved_to_a_claim_whose_hypothesis_it_violates_is_refused(source, target, words, tmp_path,
                                                                            capsys):
    """Same mask, another claim: the claim's own hypotheses (head count, U = P, U = I) refuse it."""
    moved = dict(stored(source), claim=target)
    assert not replay(moved).refuted
    assert_refused(*replay_file(tmp_path, moved, capsys), *words)


def test_value_witness_with_a_complex_top_eigenvalue_is_refused(tmp_path, capsys):
    """U = [[0.5, -1], [1, 0.5]] (eigenvalues 0.5 +- i): the value claims' spectral hypothesis fails."""
    forged = dict(stored("conj.value-full"), U=[[[0.5, -1.0], [1.0, 0.5]]])
    assert_refused(*replay_file(tmp_path, forged, capsys), "not real, simple and positive")


def test_multihead_start_outside_D_v_is_refused(tmp_path, capsys):
    """The hemisphere set of the multi-head claim: y0 -> -y0 leaves D^l(v)."""
    witness = stored("conj.multihead-causal")
    forged = dict(witness, y0=(-np.asarray(witness["y0"])).tolist())
    assert_refused(*replay_file(tmp_path, forged, capsys), "D^l(v)")


@pytest.mark.parametrize("matrix, verdict", [
    pytest.param([[2.0, 0.0], [0.0, -1.0]], None, id="real simple positive top"),
    pytest.param([[1.0, 0.0], [0.0, 1.0 + 2.0**-40]], None, id="a gap of 2^-40, isolated by the balls"),
    pytest.param([[0.5, -1.0], [1.0, 0.5]], "not certified simple", id="complex pair on top (tied real parts)"),
    pytest.param([[-1.0, 0.0], [0.0, -2.0]], "not certified positive", id="negative top"),
    pytest.param([[1.0, 0.0], [0.0, 1.0]], "cannot isolate", id="double top"),
])
def test_the_top_eigenvalue_is_certified_in_balls(matrix, verdict):
    """The hypothesis of the value claims decided by Arb's enclosures, with no tolerance."""
    problem = certified_top(np.array(matrix))
    assert problem is None if verdict is None else verdict in problem


# --- malformed input: exit 2 and one line, never a traceback --------------------------------------------------------
def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


MALFORMED = {
    "a number instead of an object": ("5", "type 'object'"),
    "NaN": ('{"claim": NaN}', "NaN"),
    "Infinity": ('{"claim": Infinity}', "Infinity"),
    "not JSON": ("{not json", "not a readable witness"),
    "deep nesting": ('{"P": ' + _nested(100_000) + "}", "not a readable witness"),
    "deep nesting, shallow enough to parse": ('{"P": ' + _nested(900) + "}", "witness"),
}
EDITS = {
    "causal 'no'": ({"causal": "no"}, "causal"),
    "schema_version 99": ({"schema_version": 99}, "schema_version"),
    "1e308 in P": ({"P": [[[1e308, 0.0], [0.0, 1.0]]]}, "P"),
    "401-digit integer in U": ({"U": "BIG"}, "U"),
    "shape mismatch": ({"y0": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]}, "shape"),
    "zero rows": ({"y0": []}, "y0"),
    "zero heads": ({"P": []}, "P"),
    "ragged P": ({"P": [[[1.0, 0.0], [0.0]]]}, "P"),
    "a token off the sphere": ({"y0": [[2.0 ** -0.5, 0.5], [0.0, 1.0]]}, "unit"),
    "a string for a number": ({"U": [[["a", 0.0], [0.0, 1.0]]]}, "U"),
    "claim unknown": ({"claim": "conj.nope"}, "no conjecture family"),
    "a generator of the wrong shape": ({"generator": [[0.0]]}, "generator"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_text_is_refused_in_one_line(name, tmp_path, capsys):
    text, words = MALFORMED[name]
    assert_refused(*replay_file(tmp_path, None, capsys, raw=text), words)


@pytest.mark.parametrize("name", sorted(EDITS))
def test_malformed_witness_is_refused_in_one_line(name, tmp_path, capsys):
    edit, words = EDITS[name]
    witness = dict(stored("conj.value-full"), **edit)
    text = json.dumps(witness).replace('"BIG"', "[[[" + "9" * 401 + ", 0.0], [0.0, 1.0]]]")
    code, err, path = replay_file(tmp_path, None, capsys, raw=text)
    assert_refused(code, err, path, words)
    assert len(err) < 400, err  # the 401 digits are not echoed in full


# --- the start measured from the certified zero ----------------------------------------------------------------------
@pytest.mark.parametrize("path", STORED, ids=[f"{p.parent.name}/{p.stem}" for p in STORED])
def test_every_stored_start_lies_in_the_ball_measured_from_the_enclosure(path):
    """The tight Krawczyk box around u* certifies at the tightest radius tried (1e-12); the ball of attraction lies in
    the certified box; the start lies in the ball from every point of u*'s box (in balls: no stored witness leans on
    a float64 run); and the stored certificate is the re-issued one (its reason, numbers, eigenvalue balls and float64
    parts)."""
    witness = load(path)
    outcome = replay(witness)
    assert outcome.refuted, outcome.summary()
    numbers = outcome.certificate.numbers
    assert numbers["zero_box_radius"] == TIGHT_RADII[0] == 1e-12
    assert numbers["basin_radius"] + numbers["zero_enclosure"] <= numbers["box_radius"]
    replayed = outcome.numbers
    assert outcome.claim == witness["claim"] and outcome.refuted is True and outcome.evidence is False
    assert {"distance_from_claim", "hypothesis_margin_at_y0", "start_from_centre"} <= replayed.keys()
    assert replayed["start_inside_certified_ball"] is True and "sim_end_distance" not in replayed
    assert replayed["start_from_centre"] + numbers["zero_enclosure"] <= numbers["basin_radius"]
    assert outcome.reason == ("validated attractor; the start lies inside its certified ball (measured from the "
                              "certified zero's enclosure)")
    stored_certificate = witness["certificate"]
    assert stored_certificate["numbers"].keys() == numbers.keys()
    for key in ("box_radius", "krawczyk_max", "unknowns", "zero_box_radius", "zero_enclosure", "basin_radius",
                "real_part_bound"):
        assert stored_certificate["numbers"][key] == pytest.approx(numbers[key], rel=1e-9), key
    # |F| at the centre is float64 rounding (~1e-16), which may differ with the BLAS that refined the centre
    assert stored_certificate["numbers"]["residual_at_centre"] == pytest.approx(numbers["residual_at_centre"],
                                                                                  abs=1e-13)
    assert [stored_certificate[key] for key in ("reason", "float64_parts", "eigenvalues")] == [
        outcome.certificate.reason, outcome.certificate.float64_parts, outcome.certificate.eigenvalues]


def test_a_rotated_start_is_measured_on_the_slice():
    """The rotating triangle turned by 0.3 rad lies on the attractor's orbit: on the slice it is at the zero (only
    the interval of angles adds ~1e-12), while the chart distance without the symmetry is ~0.3 (the control)."""
    from sim.conjectures.validated import start_distance

    witness = stored("conj.nonsymmetric-full")
    problem = _problem(witness)
    y_star = np.asarray(witness["equilibrium"])
    c, s = np.cos(0.3), np.sin(0.3)
    turned = y_star @ np.array([[c, -s], [s, c]]).T
    assert start_distance(problem, y_star, turned) < 1e-10
    without = Problem(problem.P, problem.U, problem.causal)
    assert start_distance(without, y_star, turned) > 0.1


# --- mismatches: each refusal's exact reason, one field of the rotating triangle altered at a time -----------------
TRIANGLE = ("conj.nonsymmetric-full", 0)  # l = 3, d = 2, h = 1, P = -2I + J/2, U = I, generator J
J = [[0.0, -1.0], [1.0, 0.0]]


def triangle_mismatches(**fields) -> list[str]:
    """``mismatches`` of the rotating triangle with ``fields`` replaced, against its own claim's family."""
    witness = stored(*TRIANGLE)
    return mismatches(dict(witness, **fields), FAMILIES[witness["claim"]])


def test_the_unaltered_triangle_and_a_boundary_instance_have_no_mismatch():
    """Negative controls of the refusals below: the stored triangle; a generator with entries exactly ENTRY_MAX; and
    P = [[-400, -300], [300, -400]] (|P|_2 = 500 = P_NORM_MAX exactly; Frobenius 707 > 500: the bound is the
    spectral norm). Both bounds are inclusive: equality is allowed."""
    assert triangle_mismatches() == []
    assert triangle_mismatches(generator=(ENTRY_MAX * np.array(J)).tolist()) == []
    assert np.linalg.norm([[-400.0, -300.0], [300.0, -400.0]], 2) == P_NORM_MAX  # exact in float64
    assert triangle_mismatches(P=[[[-400.0, -300.0], [300.0, -400.0]]]) == []


ONE_FIELD = {
    "causal not a bool": (dict(causal="yes"), ["causal must be true or false, not 'yes'"]),
    "P with a null entry": (dict(P=[[[-2.0, None], [0.5, -2.0]]]), ["P has an entry that is not a finite number"]),
    "P a 2-d array": (dict(P=[[-2.0, -0.5], [0.5, -2.0]]),
                      ["P must be a non-empty 3-dimensional array, not shape [2, 2]"]),
    "P an empty 3-d array": (dict(P=[[[]]]), ["P must be a non-empty 3-dimensional array, not shape [1, 1, 0]"]),
    "U of another width": (dict(U=np.eye(3)[None].tolist()),
                           ["P and U must both have shape [h, d, d]; P [1, 2, 2], U [1, 3, 3]"]),
    "y0 and equilibrium both 3 wide": (
        dict(y0=np.eye(3).tolist(), equilibrium=np.eye(3).tolist()),
        ["y0 and equilibrium must both have shape [l, 2]; y0 [3, 3], equilibrium [3, 3]"]),
    "equilibrium one token short": (dict(equilibrium=[[1.0, 0.0], [0.0, 1.0]]),
                                    ["y0 and equilibrium must both have shape [l, 2]; y0 [3, 2], equilibrium [2, 2]"]),
    "generator 3 x 3": (dict(generator=np.zeros((3, 3)).tolist()), ["generator must have shape [2, 2], not [3, 3]"]),
    "P entry over ENTRY_MAX": (dict(P=[[[-2.0, -2000.0], [2000.0, -2.0]]]),
                               ["an entry of P, U or generator exceeds 1000 in magnitude"]),
    "U entry over ENTRY_MAX": (dict(U=(2000.0 * np.eye(2))[None].tolist()),
                               ["an entry of P, U or generator exceeds 1000 in magnitude"]),
    "generator entry over ENTRY_MAX": (dict(generator=(2000.0 * np.array(J)).tolist()),
                                       ["an entry of P, U or generator exceeds 1000 in magnitude"]),
    "|P|_2 over P_NORM_MAX": (dict(P=[[[-400.0, -301.0], [301.0, -400.0]]]),
                              ["|P_eta|_2 exceeds 500 (exp(y^T P y) would overflow float64)"]),
    "a token of y0 off the sphere": (dict(y0=[[1.0 + 1e-6, 0.0], [0.0, 1.0], [-1.0, 0.0]]),
                                     ["the tokens of y0 must be unit vectors (|y_i| = 1 within 1e-09)"]),
    "causal mask for a full-attention claim": (
        dict(causal=True),
        ["mask: the witness has causal attention, the claim conj.nonsymmetric-full is about full attention"]),
    "zero generator": (dict(generator=[[0.0, 0.0], [0.0, 0.0]]),
                       ["the generator is not a nonzero skew matrix commuting with every P_eta and U_eta"]),
}


@pytest.mark.parametrize("name", sorted(ONE_FIELD))
def test_one_altered_field_is_refused_with_its_own_reason(name):
    """The whole list of problems, word for word: a refusal for another reason, or a second one, fails."""
    fields, expected = ONE_FIELD[name]
    assert triangle_mismatches(**fields) == expected


def test_a_witness_in_dimension_1_is_refused_in_one_line(tmp_path, capsys):
    """The referee's schema-valid witness with d = 1 (tokens +-1) crashed the certifier with a traceback; control: the
    stored thm1.5 witness (d = 2) replays."""
    witness = dict(stored("conj.karagodin-thm1.5"), P=[[[1.0]]], U=[[[1.0]]], y0=[[1.0], [-1.0]],
                   equilibrium=[[1.0], [-1.0]])
    code, err, path = replay_file(tmp_path, witness, capsys)
    assert_refused(code, err, path, "d >= 2, not d = 1")
    assert replay_file(tmp_path, stored("conj.karagodin-thm1.5"), capsys)[0] == 0


def test_an_unreadable_array_is_refused_with_the_converter_message_cut_at_80_characters():
    problems = triangle_mismatches(P="x" * 200)  # numpy: could not convert string to float: 'xxx...'
    assert len(problems) == 1 and problems[0].startswith("P is not an array of numbers (could not convert")
    assert len(problems[0]) == len("P is not an array of numbers ()") + 80


def test_a_full_witness_under_a_causal_claim_names_both_masks():
    """The other direction of the mask's words (the triangle above is full attention under a full claim)."""
    witness = stored("conj.value-full")
    assert mismatches(witness, FAMILIES["conj.value-causal"])[0] == (
        "mask: the witness has full attention, the claim conj.value-causal is about causal attention")


# --- the words of a refusal and of a summary -------------------------------------------------------------------------
def write(tmp_path, text: str) -> Path:
    path = tmp_path / "witness.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_of_exactly_max_bytes_loads_and_one_byte_more_is_refused(tmp_path):
    """The size bound is inclusive: the stored witness padded with spaces to MAX_BYTES loads (the control), to
    MAX_BYTES + 1 it is refused before parsing."""
    text = json.dumps(stored("conj.value-full"))
    assert load(write(tmp_path, text + " " * (MAX_BYTES - len(text))))["claim"] == "conj.value-full"
    with pytest.raises(ValueError, match=f"larger than {MAX_BYTES} bytes"):
        load(write(tmp_path, text + " " * (MAX_BYTES + 1 - len(text))))


#: Reads a witness in a process whose locale encoding is ASCII (C locale, with Python's UTF-8 mode and its coercion of
#: the C locale both off): the witness through load, and the same file through open() with the locale's encoding.
ASCII_LOCALE_READ = """
import locale, sys
from sim.conjectures.replay import load
print(locale.getencoding())
print(ascii(load(sys.argv[1])["provenance"]))
try:
    open(sys.argv[1]).read()
except UnicodeDecodeError:
    print("the locale cannot read it")
"""


def test_a_witness_is_read_as_utf_8_whatever_the_locale(tmp_path):
    """A provenance with non-ASCII characters, written as UTF-8, loads in an ASCII locale; the control: the same
    file read with the locale's encoding fails there (so the locale is one where the encoding matters)."""
    witness = dict(stored("conj.value-full"), provenance="found by the search \u2014 \u03a9, \u00e9t\u00e9")
    path = write(tmp_path, json.dumps(witness, ensure_ascii=False))
    assert path.read_bytes().count("\u2014".encode()) == 1  # stored as UTF-8 bytes, not as a \\u escape
    # read here too (this process's locale is UTF-8): mutation testing maps a test to the functions it calls in its
    # own process, and without this call no mutant of load would run this test, whose subprocess is what tells
    assert load(path)["provenance"] == witness["provenance"]
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", ASCII_LOCALE_READ, str(path)], capture_output=True, text=True,
                          env=env, cwd=Path(__file__).parents[2], timeout=120)
    assert done.returncode == 0, done.stderr
    encoding, provenance, control = done.stdout.splitlines()
    assert encoding.lower() not in ("utf-8", "utf8") and control == "the locale cannot read it"
    assert provenance == ascii(witness["provenance"])


def test_a_schema_refusal_names_the_path_inside_the_witness_or_the_document(tmp_path):
    bad_entry = dict(stored("conj.value-full"), P=[[[1.0, "a"], [0.0, 1.0]]])
    with pytest.raises(ValueError, match=r"not a valid witness \(witness.schema.json\): at P/0/0/1: ") as nested:
        load(write(tmp_path, json.dumps(bad_entry)))
    with pytest.raises(ValueError, match=r"not a valid witness \(witness.schema.json\): at the document: "):
        load(write(tmp_path, "5"))
    assert str(nested.value).count("\n") == 0


@pytest.mark.parametrize("length, expected", [
    pytest.param(200, "a" * 200, id="200 characters kept"),
    pytest.param(201, "a" * 197 + "...", id="201 cut to 200"),
])
def test_one_line_keeps_200_characters_and_cuts_longer_text_to_200(length, expected):
    assert _one_line("a" * length) == expected
    assert _one_line("two\n  lines") == "two lines"


def test_the_known_claims_are_listed_in_order_and_cut_to_150_characters(monkeypatch):
    monkeypatch.setattr(replay_module, "FAMILIES", {"b" * 73: None, "a" * 75: None})  # 75 + 2 + 73 = 150
    assert _known() == "a" * 75 + ", " + "b" * 73
    monkeypatch.setattr(replay_module, "FAMILIES", {"b" * 74: None, "a" * 75: None})  # 151
    assert _known() == "a" * 75 + ", " + "b" * 70 + "..."


def test_the_summary_says_refuted_or_not_a_witness_then_the_numbers_and_the_certificate():
    witness = stored("conj.value-full")
    outcome = replay(witness)
    lines = outcome.summary().split("\n")
    assert lines[0] == f"conj.value-full: REFUTED by this witness ({outcome.reason})"
    assert lines[1:1 + len(outcome.numbers)] == [f"  {key}: {value}" for key, value in outcome.numbers.items()]
    assert lines[1 + len(outcome.numbers)] == "certificate:"
    assert "\n".join(lines[2 + len(outcome.numbers):]) == outcome.certificate.summary()
    refused = replay(dict(witness, claim="conj.value-causal"))
    assert refused.summary().split("\n")[0] == f"conj.value-causal: NOT a witness ({refused.reason})"


def test_a_mismatched_witness_is_refused_before_any_certificate_with_every_problem_listed():
    """The value-full witness under the multi-head causal claim: two problems (mask and head count), joined by '; ';
    the certificate is the empty 'not attempted' one."""
    witness = dict(stored("conj.value-full"), claim="conj.multihead-causal")
    problems = mismatches(witness, FAMILIES["conj.multihead-causal"])
    assert len(problems) >= 2 and problems[0].startswith("mask: ")
    outcome = replay(witness)
    assert (outcome.claim, outcome.refuted, outcome.reason, outcome.numbers) == (
        "conj.multihead-causal", False, "the witness does not meet its claim's hypotheses: " + "; ".join(problems), {})
    certificate = outcome.certificate
    assert certificate.certified is False and certificate.equilibrium.shape == (0, 0)
    assert certificate.reason == "not attempted: the witness does not match its claim"


def consensus_of(witness: dict) -> list:
    """Every token at the equilibrium's first token (y0 there too): l copies of one unit vector."""
    return np.tile(np.asarray(witness["equilibrium"])[:1], (len(witness["equilibrium"]), 1)).tolist()


@pytest.mark.parametrize("claim, make, reason", [
    pytest.param("conj.value-full", lambda w: dict(w, equilibrium=consensus_of(w), y0=consensus_of(w)),
                 "the attractor is the claimed outcome (distance 0 < 0.01)", id="consensus: the claimed outcome"),
    pytest.param("conj.value-full-antipodal", lambda w: dict(w, equilibrium=consensus_of(w), y0=consensus_of(w)),
                 "no validated attractor: unstable", id="a saddle: no validated attractor"),
    pytest.param("conj.value-full", lambda w: dict(w, equilibrium=(-np.asarray(w["equilibrium"])).tolist()),
                 "float64 runs from the start do not reach the certified ball", id="the attractor's mirror image"),
])
def test_a_matching_witness_that_does_not_refute_says_which_step_failed(claim, make, reason):
    """Past the hypotheses, each later step's refusal (the stored witnesses above are the controls: they refute)."""
    outcome = replay(make(stored(claim)))
    assert outcome.refuted is False and outcome.claim == claim
    assert outcome.reason.startswith(reason), outcome.reason


def test_a_family_passed_to_replay_replaces_the_claims():
    """A search passes its own family: the value-full witness checked against the causal family is refused."""
    outcome = replay(stored("conj.value-full"), FAMILIES["conj.value-causal"])
    assert outcome.refuted is False
    assert outcome.reason.startswith("the witness does not meet its claim's hypotheses: mask")


# --- replay's later steps at their bounds, and what the family and the integrators are given -----------------------
def family_with(claim: str, **functions):
    """``claim``'s family with some of its functions replaced (a search passes its own family the same way)."""
    return dataclasses.replace(FAMILIES[claim], **functions)


def written_with_integers(value):
    """A witness's JSON value with every whole float written as an integer (2 for 2.0: the schema accepts both)."""
    if isinstance(value, list):
        return [written_with_integers(item) for item in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def test_a_witness_written_with_integers_reaches_its_family_as_float64():
    """The gradient-value witness (P = U = [[2, -2], [-2, 2]]) with the start (e_2, -e_2), every number written as an
    integer: the family's distance receives the witness's P, U (float64, a leading instance axis) and the certified
    equilibrium, its state_margin U and y0 (float64). The control: the same witness written with floats replays
    to the same outcome, and the integer one really holds integers."""
    floats = dict(instance(stored("conj.gradient-value")), y0=[[0.0, 1.0], [0.0, -1.0]])
    integers = {key: written_with_integers(value) for key, value in floats.items()}
    assert all(np.asarray(integers[key]).dtype == np.int64 for key in ("P", "U", "y0"))
    seen = {}
    family = FAMILIES["conj.gradient-value"]

    def distance(P, U, y):
        seen["distance"] = (P, U, y)
        return family.distance(P, U, y)

    def state_margin(U, ys):
        seen["state_margin"] = (U, ys)
        return family.state_margin(U, ys)

    outcome = replay(integers, family_with("conj.gradient-value", distance=distance, state_margin=state_margin))
    P, U, y_star = seen["distance"]
    U_at_margin, ys = seen["state_margin"]
    for array in (P, U, y_star, U_at_margin, ys):
        assert array.dtype == np.float64
    assert np.array_equal(P, np.asarray(floats["P"])[None]) and np.array_equal(U, np.asarray(floats["U"])[None])
    assert np.array_equal(y_star, outcome.certificate.equilibrium[None])
    assert np.array_equal(U_at_margin, np.asarray(floats["U"])) and np.array_equal(ys, np.asarray(floats["y0"])[None])
    control = replay(floats)
    assert (outcome.refuted, outcome.reason, outcome.numbers) == (control.refuted, control.reason, control.numbers)
    assert outcome.evidence  # that start reaches the attractor's ball in float64 runs only: evidence, not refuted


def test_an_attractor_exactly_away_from_the_claim_is_not_its_outcome_and_one_ulp_nearer_is():
    """The bound is distance >= AWAY (the module docstring): a family whose distance is AWAY exactly lets the stored
    witness refute (the control), one float below it is refused with its reason."""
    witness = instance(stored("conj.value-full"))
    at = replay(witness, family_with("conj.value-full", distance=lambda P, U, y: np.array([AWAY])))
    assert at.refuted is True and at.numbers["distance_from_claim"] == AWAY
    nearer = float(np.nextafter(AWAY, 0.0))
    below = replay(witness, family_with("conj.value-full", distance=lambda P, U, y: np.array([nearer])))
    assert (below.refuted, below.reason) == (False, f"the attractor is the claimed outcome (distance {nearer:.3g} < "
                                                    f"{AWAY:g})")


def test_the_start_must_lie_more_than_two_box_radii_inside_the_hypothesis_set():
    """A margin of exactly 2 box radii is the edge (refused with its reason); one float above it is inside (the
    control: the stored witness refutes)."""
    witness = instance(stored("conj.value-full"))
    radius = replay(witness).certificate.numbers["box_radius"]

    def with_margin(value: float):
        return replay(witness, family_with("conj.value-full", state_margin=lambda U, ys: np.array([value])))

    edge = with_margin(2 * radius)
    assert (edge.refuted, edge.reason) == (False, f"the start lies on the edge of the hypothesis set (margin "
                                                  f"{2 * radius:.3g})")
    assert edge.numbers["hypothesis_margin_at_y0"] == 2 * radius
    assert with_margin(float(np.nextafter(2 * radius, np.inf))).refuted is True


# --- a start outside the certified ball: float64 evidence at best, never a refutation (SPEC section 5) -------------
def test_a_start_carried_into_the_ball_only_by_float64_runs_is_evidence_not_a_refutation(tmp_path):
    """The former multi-head witness: validated attractor, start in D^l(v) outside its ball, both integrators end
    ~1e-12 from y*. The replay says float64 evidence (not refuted), names the rigorous and the float64 parts, the
    command exits 1, and a stored copy's record fails (a stored witness must refute)."""
    from sim.conjectures.replay import FLOAT64_ONLY, record_of

    witness = load(FLOAT64_ONLY_WITNESS)
    outcome = replay(witness)
    assert outcome.certificate.certified and outcome.numbers["start_inside_certified_ball"] is False
    assert max(outcome.numbers["sim_end_distance"], outcome.numbers["scipy_end_distance"]) < 1e-9
    assert (outcome.refuted, outcome.evidence, outcome.reason) == (False, True, FLOAT64_ONLY)
    assert "validated (ball arithmetic)" in outcome.reason and "float64 integrators" in outcome.reason
    assert outcome.summary().startswith("conj.multihead-causal: FLOAT64 EVIDENCE only, not a refutation (")
    assert main(["replay", str(FLOAT64_ONLY_WITNESS)]) == 1
    assert record_of(outcome, "copy").verdict == "failed"


def test_replay_json_says_float64_evidence_only(tmp_path, capsys):
    """``replay --json`` carries the evidence flag: a script reading it tells float64 evidence from a refutation. It
    is strict JSON (JavaScript's JSON.parse refuses Infinity): a claim that restricts no state prints its margin as
    null, not Infinity (conj.value-full)."""

    def strict(text):
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))

    assert main(["replay", str(FLOAT64_ONLY_WITNESS), "--json"]) == 1
    printed = strict(capsys.readouterr().out)
    assert (printed["refuted"], printed["float64_evidence_only"]) == (False, True)
    stored = next(p for p in STORED if p.parent.name == "conj.multihead-causal")
    assert main(["replay", str(stored), "--json"]) == 0
    printed = strict(capsys.readouterr().out)
    assert (printed["refuted"], printed["float64_evidence_only"]) == (True, False)
    assert main(["replay", str(next(p for p in STORED if p.parent.name == "conj.value-full")), "--json"]) == 0
    assert strict(capsys.readouterr().out)["numbers"]["hypothesis_margin_at_y0"] is None


def test_the_same_instance_started_inside_its_ball_refutes_and_a_forged_one_still_fails():
    """The controls of the test above: the attractor of the former witness as its own start lies inside its ball but
    outside D^l(v) (a token at -v), so it is no witness either; the stored hand-made witness, whose start is inside
    its ball and in D^l(v), refutes; its equilibrium moved to the antipode of its second token is refused."""
    witness = load(FLOAT64_ONLY_WITNESS)
    y_star = replay(witness).certificate.equilibrium
    at_attractor = replay(dict(witness, y0=y_star.tolist()))
    assert not at_attractor.refuted and not at_attractor.evidence and "D^l(v)" in at_attractor.reason
    inside = replay(stored("conj.multihead-causal"))
    assert inside.refuted and inside.numbers["start_inside_certified_ball"] is True
    hand = stored("conj.multihead-causal")
    forged = dict(hand, equilibrium=[hand["equilibrium"][0], (-np.asarray(hand["equilibrium"][1])).tolist()])
    assert not replay(forged).refuted and not replay(forged).evidence


def test_the_float64_runs_must_end_within_half_the_ball_less_the_zero_enclosure(monkeypatch):
    """The float64-only witness, with the runs' ends replaced: an end e with e + enclosure = basin / 2 exactly is no
    evidence (whichever integrator it is), one float nearer is; neither refutes."""
    witness = instance(load(FLOAT64_ONLY_WITNESS))
    outcome = replay(witness)
    assert outcome.evidence and outcome.numbers["start_inside_certified_ball"] is False
    basin, enclosure = outcome.certificate.numbers["basin_radius"], outcome.certificate.numbers["zero_enclosure"]
    assert 0 < enclosure < basin / 4
    edge = basin / 2 - enclosure
    while edge + enclosure < basin / 2:  # the largest end meeting the bound with equality, to the last float
        edge = float(np.nextafter(edge, np.inf))
    while np.nextafter(edge, 0.0) + enclosure >= basin / 2:
        edge = float(np.nextafter(edge, 0.0))
    assert edge + enclosure == basin / 2
    nearer = float(np.nextafter(edge, 0.0))
    for sim_end, scipy_end, evidence in ((edge, 0.0, False), (0.0, edge, False), (nearer, nearer / 2, True),
                                         (nearer / 2, nearer, True)):
        ends = {"evidence_horizon": EVIDENCE_HORIZON, "sim_end_distance": sim_end, "scipy_end_distance": scipy_end}
        monkeypatch.setattr(replay_module, "_evidence", lambda problem, y0, y_star, ends=ends: ends)
        outcome = replay(witness)
        assert (outcome.refuted, outcome.evidence) == (False, evidence), (sim_end, scipy_end)
        assert outcome.reason == (replay_module.FLOAT64_ONLY if evidence
                                  else "float64 runs from the start do not reach the certified ball")


def test_the_evidence_is_sims_dopri5_and_scipys_lsoda_from_the_start_to_the_horizon(monkeypatch):
    """The two runs of the module docstring, each called once: sim's with ``EVIDENCE``'s tolerances, SciPy's LSODA
    with the same ones over [0, EVIDENCE_HORIZON]; the end distances are those of each run's state at the horizon."""
    witness = load(FLOAT64_ONLY_WITNESS)
    calls = {}

    def spy(name, function):
        def called(*args, **kwargs):
            result = function(*args, **kwargs)
            bound = inspect.signature(function).bind(*args, **kwargs)
            bound.apply_defaults()
            calls.setdefault(name, []).append((bound.arguments, result))
            return result
        return called

    monkeypatch.setattr(replay_module, "integrate", spy("integrate", replay_module.integrate))
    monkeypatch.setattr(replay_module, "solve_ivp", spy("solve_ivp", replay_module.solve_ivp))
    outcome = replay(witness)
    assert outcome.evidence and outcome.numbers["start_inside_certified_ball"] is False
    assert len(calls["integrate"]) == len(calls["solve_ivp"]) == 1
    (ours, sim_states), = calls["integrate"]
    (theirs, solution), = calls["solve_ivp"]
    y0 = np.asarray(witness["y0"])
    assert np.array_equal(ours["y0"], y0) and ours["t1"] == EVIDENCE_HORIZON and ours["controller"] is EVIDENCE
    assert np.array_equal(theirs["y0"], y0.reshape(-1)) and tuple(theirs["t_span"]) == (0.0, EVIDENCE_HORIZON)
    assert theirs["method"] == "LSODA"
    assert theirs["options"] == {"rtol": EVIDENCE.rtol, "atol": EVIDENCE.atol} == {"rtol": 1e-10, "atol": 1e-12}
    problem, y_star = _problem(witness), outcome.certificate.equilibrium
    assert solution.t[-1] == EVIDENCE_HORIZON and solution.t[-2] < EVIDENCE_HORIZON
    assert outcome.numbers["sim_end_distance"] == start_distance(problem, y_star, sim_states[-1])
    assert outcome.numbers["scipy_end_distance"] == start_distance(problem, y_star,
                                                                   solution.y[:, -1].reshape(y0.shape))
    assert outcome.numbers["scipy_end_distance"] != start_distance(problem, y_star,
                                                                   solution.y[:, -2].reshape(y0.shape))


# --- the writing of witnesses: make_witness, its certificate block, strict JSON ---------------------------------------
def test_make_witness_writes_back_what_the_stored_witness_holds():
    """A stored witness rebuilt from its claim, problem, equilibrium and start: the same document (the stored ones
    were written by make_witness), with the provenance and seeds given, its certificate the replay's, and strict
    JSON (no NaN or Infinity)."""
    original = stored("conj.value-full")
    witness = make_witness("conj.value-full", _problem(original), np.asarray(original["equilibrium"]),
                           np.asarray(original["y0"]), provenance=original["provenance"], seeds=original["seeds"])
    assert json.loads(json.dumps(witness, allow_nan=False)) == original
    outcome = replay(witness)
    assert witness["certificate"] == json.loads(json.dumps(witness_certificate(outcome), allow_nan=False))
    assert witness["equilibrium"] == outcome.certificate.equilibrium.tolist()  # the certified zero, not the input


def test_a_forged_certificate_block_makes_the_witness_no_witness(tmp_path, capsys):
    """The referee's forgeries: the thm1.5 witness with another witness's certificate block pasted in, and with its
    basin radius and real-part bound edited. The replay recomputes everything and said REFUTED (exit 0) beside a
    false block; now the block must be the one the replay establishes. Control: the block as stored replays."""
    witness = stored("conj.karagodin-thm1.5")
    assert certificate_differences(witness["certificate"], replay(witness)) == []
    pasted = dict(witness, certificate=stored("conj.value-causal")["certificate"])
    edited = json.loads(json.dumps(witness))
    edited["certificate"]["numbers"].update(basin_radius=0.5, real_part_bound=-100.0)
    edited["certificate"]["reason"] = "forged"
    for forged, words in ((pasted, "numbers.basin_radius"), (edited, "reason differs")):
        outcome = replay(forged)
        assert not outcome.refuted and not outcome.evidence and words in outcome.reason, outcome.reason
        assert "edited or copied from another witness" in outcome.reason
        code, _, _ = replay_file(tmp_path, forged, capsys)
        assert code == 1
    assert "numbers.real_part_bound: stored -100.0" in replay(edited).reason


def test_certificate_numbers_may_differ_by_rounding_only():
    outcome = replay(stored("conj.value-full"))
    block = json.loads(json.dumps(witness_certificate(outcome)))
    basin = block["numbers"]["basin_radius"]
    assert certificate_differences(dict(block, numbers=dict(block["numbers"], basin_radius=basin * (1 + 1e-12))),
                                   outcome) == []
    assert certificate_differences(dict(block, numbers=dict(block["numbers"], basin_radius=basin * (1 + 1e-6))),
                                   outcome) == [f"numbers.basin_radius: stored {basin * (1 + 1e-6)}, replayed {basin}"]
    missing = dict(block, replay={k: v for k, v in block["replay"].items() if k != "distance_from_claim"})
    assert certificate_differences(missing, outcome)[0].startswith("replay.distance_from_claim: stored None")


def test_make_witness_records_no_seeds_as_an_empty_table():
    original = stored("conj.value-full")
    witness = make_witness("conj.value-full", _problem(original), np.asarray(original["equilibrium"]),
                           np.asarray(original["y0"]), provenance="by hand")
    assert witness["seeds"] == {} and witness["provenance"] == "by hand"


def test_make_witness_refuses_a_start_that_does_not_refute_with_the_replays_reason():
    original = stored("conj.value-full")
    with pytest.raises(ValueError) as error:
        make_witness("conj.value-full", _problem(original), np.asarray(consensus_of(original)),
                     np.asarray(consensus_of(original)), provenance="control")
    assert str(error.value).startswith("not a witness of conj.value-full: the attractor is the claimed outcome")


def test_the_certificate_block_holds_the_replays_parts_with_infinities_as_null():
    outcome = replay(stored("conj.value-full"))
    numbers = dict(outcome.certificate.numbers, unbounded=math.inf)
    block = witness_certificate(dataclasses.replace(
        outcome, certificate=dataclasses.replace(outcome.certificate, numbers=numbers),
        numbers=dict(outcome.numbers, below=-math.inf)))
    assert block["reason"] == outcome.certificate.reason
    assert block["eigenvalues"] == outcome.certificate.eigenvalues
    assert block["float64_parts"] == outcome.certificate.float64_parts
    assert block["numbers"] == dict(outcome.certificate.numbers, unbounded=None)
    assert outcome.numbers["hypothesis_margin_at_y0"] == math.inf  # conj.value-full restricts no state
    assert block["replay"] == dict(outcome.numbers, below=None, hypothesis_margin_at_y0=None)


def test_strict_numbers_writes_every_non_finite_float_as_null_and_keeps_the_rest():
    assert strict_numbers({"inf": math.inf, "minus": -math.inf, "nan": math.nan, "x": 1.5, "n": 3, "s": "a"}) == {
        "inf": None, "minus": None, "nan": None, "x": 1.5, "n": 3, "s": "a"}


def _numbers(value) -> list:
    """Every number in a nested list (a witness array as draft writes it)."""
    return [x for item in value for x in _numbers(item)] if isinstance(value, list) else [value]


def test_draft_writes_every_array_as_float_lists_and_the_generator_only_when_there_is_one():
    """Integer arrays come out as floats (the schema's numbers; JSON keeps 1.0 apart from 1), the generator as its
    list, or null without one."""
    eye = np.eye(2, dtype=int)
    rotating = Problem(np.stack([2 * eye]), np.stack([eye]), True, np.array([[0, 1], [-1, 0]]))
    written = draft("conj.nonsymmetric-full", rotating, eye, eye)
    assert written == {"schema_version": replay_module.SCHEMA_VERSIONS["witness"], "claim": "conj.nonsymmetric-full",
                       "causal": True, "P": [[[2, 0], [0, 2]]], "U": [[[1, 0], [0, 1]]],
                       "generator": [[0, 1], [-1, 0]], "equilibrium": [[1, 0], [0, 1]], "y0": [[1, 0], [0, 1]]}
    for key in ("P", "U", "generator", "equilibrium", "y0"):
        assert {type(x) for x in _numbers(written[key])} == {float}, key
    assert draft("conj.value-full", Problem(rotating.P, rotating.U, False), eye, eye)["generator"] is None
