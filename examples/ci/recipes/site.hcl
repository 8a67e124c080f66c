# A tiny recipe for the CI example. Its end-to-end test plans it against a
# scratch directory (CI_SCRATCH) instead of a real host.
file "motd" {
  path    = "${env("CI_SCRATCH", "/srv/ci-example")}/motd"
  content = "Welcome to ${host.hostname}\n"
  mode    = "0644"
}
