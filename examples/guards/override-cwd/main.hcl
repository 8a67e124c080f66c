# RFC 011, "Setting guard parameters".
default "guards" {
  root = env("GUARDS_ROOT", "/tmp/toque-guards")
}

directory "root" {
  path = node.guards.root
}

# Guard parameters go in an object with the command: cwd here overrides
# the cwd the guard would inherit from the resource.
bash "Override my guard attributes" {
  guard_interpreter = "bash"
  code              = "echo override me from $PWD > '${node.guards.root}/override.ran'"
  cwd               = "/var"
  only_if = {
    command = "[[ $PWD == \"/opt\" ]]"
    cwd     = "/opt" # Don't try to put me in my place
  }
}
