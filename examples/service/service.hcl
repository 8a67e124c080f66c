# service: a systemd service from its unit file, its configuration from a
# template, enabled and started; when (and only when) the rendered
# configuration changes, the service is restarted, once, at the end.
#
# It changes the host: run it as root on a machine where systemd runs.
#
#   toque -chdir=examples/service plan -out=/tmp/hello.plan
#   toque apply /tmp/hello.plan
#   cat /run/toque-hello/greeting        # hello from toque
#
#   HELLO_GREETING=bonjour toque -chdir=examples/service plan -out=/tmp/hello.plan
#     shows the new line of /etc/toque-hello.conf and the restart it notifies
#   toque apply /tmp/hello.plan
#   cat /run/toque-hello/greeting        # bonjour
#
# To remove it: systemctl disable --now toque-hello.service, then delete
# /etc/systemd/system/toque-hello.service and /etc/toque-hello.conf (or
# declare systemd_unit "toque-hello.service" { action = ["stop",
# "disable", "delete"] }).
default "hello" {
  greeting = env("HELLO_GREETING", "hello from toque")
}

# The configuration the service reads when it starts (EnvironmentFile).
template "/etc/toque-hello.conf" {
  source    = "hello.conf.tpl"
  variables = { greeting = node.hello.greeting }
  mode      = "0644"
  notifies "restart" {
    resource = "service[toque-hello]"
    timing   = "delayed"
  }
}

# The unit file, from an object of sections (a string works too). The
# plan checks it with systemd-analyze verify, and after it changes toque
# runs one systemctl daemon-reload before anything starts.
systemd_unit "toque-hello.service" {
  content = {
    Unit = {
      Description = "toque's example service: writes its greeting, then waits"
    }
    Service = {
      EnvironmentFile  = "/etc/toque-hello.conf"
      RuntimeDirectory = "toque-hello"
      # Done before the service counts as started. $$ is a literal $ for
      # systemd: the shell expands GREETING.
      ExecStartPre = "/bin/sh -c 'echo \"$$GREETING\" > /run/toque-hello/greeting'"
      ExecStart    = "/bin/sleep infinity"
    }
    Install = {
      WantedBy = "multi-user.target"
    }
  }
  # A new unit file takes effect when the service restarts.
  notifies "restart" {
    resource = "service[toque-hello]"
  }
}

# Enabled (started at boot) and running: the plan shows one step per
# action, each from the state the one before leaves.
service "toque-hello" {
  action = ["enable", "start"]
}
