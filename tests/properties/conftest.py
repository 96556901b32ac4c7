"""The property suite hands the report one summary table of every property's runs (see control.observe)."""

import pytest

from foundation.records import ReportSection, Table
from tests.properties.control import summary_rows

TEXT = (
    "Every property of tests/properties ran on Hypothesis-generated instances that satisfy the theorem's "
    "hypotheses (controls: on a deliberately broken model or on instances outside the hypotheses, where the "
    "property must fail). 'Runs' counts check evaluations, Hypothesis' replays included; 'held' how many of them "
    "the property held on. Tolerances are derived from the solver's error: each trajectory is integrated at "
    "rtol 1e-7 and at rtol 1e-5 by Dormand-Prince 5(4); their largest difference bounds the kept trajectory's "
    "error, times the Lipschitz constant of the monitored function (see sim/properties/conclusions.py)."
)


@pytest.fixture(scope="session", autouse=True)
def property_summary(report_section):
    yield
    rows = summary_rows()
    if rows:
        report_section(ReportSection(
            title="Property tests: what each property saw", text=TEXT, order=40,
            tables=(Table("Properties and negative controls", ("claim", "property", "kind", "runs", "held",
                                                              "ranges of the deciding numbers"), rows),)))
