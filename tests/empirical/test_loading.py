"""Reading GGUF files: each file version parsed once per process, gguf left as it was found."""

import numpy as np
import pytest

from empirical.loading import reading_gguf, remembering_gguf_parses


def _write_gguf(path, rows: int):
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.arange(rows * 8, dtype=np.float32).reshape(rows, 8))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def small_gguf(tmp_path):
    return _write_gguf(tmp_path / "small.gguf", 4)


def test_a_file_is_parsed_once_within_a_read_and_gguf_is_restored_after(small_gguf):
    import gguf

    parser, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with reading_gguf(small_gguf):
        first = gguf.GGUFReader(small_gguf)
        assert gguf.GGUFReader(small_gguf) is first  # transformers' second parse (the weights after the config)
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 1) is gguf.get_tensor_name_map(arch, 1)
        np.testing.assert_array_equal(first.tensors[0].data.reshape(4, 8), np.arange(32).reshape(4, 8))
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (parser, name_map)


def test_gguf_is_restored_when_a_read_fails(small_gguf):
    import gguf

    parser = gguf.GGUFReader
    with pytest.raises(RuntimeError), remembering_gguf_parses():
        raise RuntimeError("a load that fails")
    assert gguf.GGUFReader is parser


def test_a_read_within_a_read_restores_what_it_found(small_gguf):
    import gguf

    parser = gguf.GGUFReader
    with reading_gguf(small_gguf):
        outer = gguf.GGUFReader
        with reading_gguf(small_gguf):
            pass
        assert gguf.GGUFReader is outer
    assert gguf.GGUFReader is parser


def test_a_later_read_reuses_the_parse_and_a_changed_file_is_parsed_anew(small_gguf):
    """A run reads the configuration, then the model, in two reads: the file is parsed once; rewritten, anew."""
    import gguf

    with reading_gguf(small_gguf):
        first = gguf.GGUFReader(small_gguf)
    with reading_gguf(small_gguf):
        assert gguf.GGUFReader(small_gguf) is first
    _write_gguf(small_gguf, 6)
    with reading_gguf(small_gguf):
        changed = gguf.GGUFReader(small_gguf)
    assert changed is not first
    np.testing.assert_array_equal(changed.tensors[0].data.reshape(6, 8), np.arange(48).reshape(6, 8))
