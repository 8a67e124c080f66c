# RFC 011, "Simplification through attribute inheritance": the guard runs
# in csh and inherits the resource's environment (JAVA_HOME) and path, so
# neither is written twice.
default "guards" {
  root = env("GUARDS_ROOT", "/tmp/toque-guards")
}

directory "root" {
  path = node.guards.root
}

script "javatooling" {
  interpreter       = "sh" # toque's script resource names its interpreter
  guard_interpreter = "csh"
  environment = {
    JAVA_HOME    = abspath("jdk1.7/home")
    DAEMON_STATE = "${node.guards.root}/daemon"
  }
  path   = [abspath("jdk1.7/home/bin")]
  code   = "java-based-daemon-ctl.sh -start"
  not_if = "java-based-daemon-ctl.sh -test-started"
}
