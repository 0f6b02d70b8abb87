"""The RADAR statistics core: pure numpy, no engine imports. Equation numbers refer to the paper."""
