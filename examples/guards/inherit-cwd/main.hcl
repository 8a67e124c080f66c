# RFC 011, "Inheritance is your friend".
default "guards" {
  root = env("GUARDS_ROOT", "/tmp/toque-guards")
}

directory "root" {
  path = node.guards.root
}

# This resource runs because the cwd of the guard is the same as that of
# the parent resource.
bash "My cwd gets inherited" {
  guard_interpreter = "bash"
  code              = "echo inherit me from $PWD > '${node.guards.root}/inherited.ran'"
  cwd               = "/opt"
  only_if           = "[[ $PWD == \"/opt\" ]]" # Glad I didn't have to add cwd
}
