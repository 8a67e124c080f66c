# RFC 011, "Custom interpreter for script resources".
default "guards" {
  root = env("GUARDS_ROOT", "/tmp/toque-guards")
}

directory "root" {
  path = node.guards.root
}

# This resource runs because the guard uses the bash interpreter; passing
# the same string to the default interpreter (/bin/sh) makes the guard
# false, as the resource below shows.
bash "Use bash for only_if" {
  guard_interpreter = "bash"
  code              = "echo I am $SHELL > '${node.guards.root}/use-bash.ran'"
  only_if           = "[[ 1 == 1 ]]" # won't work outside of bash
}

# The same guard under the default interpreter: /bin/sh (dash on Debian)
# has no [[ command, so the guard exits 127 and is false, with a warning.
bash "Use sh for only_if" {
  guard_interpreter = "default"
  code              = "echo I am $SHELL > '${node.guards.root}/use-sh.ran'"
  only_if           = "[[ 1 == 1 ]]"
}
