# The "base" policy of RFC 097's example: one cookbook, base, and some
# attributes. The core team owns it and publishes its lock
# (policy.lock.json, made by `toque install`); myapp includes that lock.
name     = "base"
run_list = ["base::default"]

cookbook "base" {
  path = "cookbooks/base"
}

default_attributes = {
  base_config = {
    config_a = "12345"
    config_b = "abc123"
  }
}
