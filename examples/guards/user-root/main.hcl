# RFC 011, "Boolean result code interpolation details".
default "guards" {
  root = env("GUARDS_ROOT", "/tmp/toque-guards")
}

directory "root" {
  path = node.guards.root
}

# A bash resource's guards run in bash (its default guard interpreter), so
# this runs only when toque runs as root ($USER is root).
bash "systemrestart" {
  code    = "echo rebooting > '${node.guards.root}/systemrestart.ran'"
  only_if = "[ \"$USER\" == \"root\" ]"
}

# The RFC says /bin/sh evaluates the same test. On Debian /bin/sh is dash,
# whose [ accepts = but not ==: "unexpected operator", exit 2, so under
# the default interpreter this guard is false even for root.
bash "systemrestart with sh" {
  guard_interpreter = "default"
  code              = "echo rebooting > '${node.guards.root}/systemrestart-sh.ran'"
  only_if           = "[ \"$USER\" == \"root\" ]"
}
