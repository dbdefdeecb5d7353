"""The G1 walking task: its definition, its model and its physics on the CPU and on Warp."""
