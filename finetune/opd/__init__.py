"""On-policy distillation (OPD) in the simulated environments.

The student acts in the same environments (domain tools, simulated user) that made the data; a
fixed teacher scores each student trajectory once, and the student is pushed towards the
teacher's per-token log-probabilities on the tokens it sampled itself. Pure objective math lives
in `objective`, the Guided schedule in `guided`, the Selective gate and weights in `selective`.
"""
