"""The paper's simulations: its systems and figures 1-6, the numbers measured on them, the theorems' figures and the
stability check of Remark 4.1."""
