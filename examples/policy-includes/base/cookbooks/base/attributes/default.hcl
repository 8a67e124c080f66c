# Compile-time attributes of the base cookbook. Where the files go is an
# attribute so the example can run anywhere (POLICY_EXAMPLE_ROOT).
default "base" {
  root = env("POLICY_EXAMPLE_ROOT", "/tmp/toque-policy-example")
}
