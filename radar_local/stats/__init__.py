"""The RADAR statistics core: numpy, and scipy for Student's t; no engine imports. Equation numbers refer
to the paper."""
