"""The G1 walk on MuJoCo Warp (backend=mjwarp): every world on the learner's device."""
