# RFC 097's "myapp" policy: its own cookbook and attribute, plus the base
# policy included from its lock. `toque install` merges them into
# policy.lock.json: run list [recipe[base::default], recipe[mycookbook::default]],
# default attributes base_config.* (from base) and mycookbook.version.
name     = "myapp"
run_list = ["mycookbook::default"]

cookbook "mycookbook" {
  path = "cookbooks/mycookbook"
}

default_attributes = {
  mycookbook = {
    version = "1.7.0"
  }
}

# A directory holding base.lock.json or policy.lock.json. In the RFC the
# lock comes from git:
#   include_policy "base" { git = "https://git.example.com/policies.git", path = "base/policy.lock.json", ref = "main" }
include_policy "base" {
  path = "../base"
}
