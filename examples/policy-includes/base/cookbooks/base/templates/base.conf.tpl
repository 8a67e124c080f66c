# written by the base cookbook
config_a = ${config_a}
config_b = ${config_b}
