"""The theorems' conclusions checked on one integrated instance (:mod:`sim.properties.conclusions`): the functions
the Hypothesis property tests of tests/properties call on generated instances and, with a broken model, in their
negative controls."""
