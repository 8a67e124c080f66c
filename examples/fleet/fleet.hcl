# The inventory of examples/fleet: five hosts the example makes on this
# machine (examples/fleet/lab), in two groups. run.sh points ssh at the
# lab's own configuration (LAB_SSH_CONFIG: its key and known_hosts, never
# your ~/.ssh); against real hosts, drop ssh_config and use their ssh
# aliases.
ssh_config = env("LAB_SSH_CONFIG")
recipes    = "site"

# toque's own state on each host, apart from any toque state the machine
# has (the hosts' /var and /run are overlays of the machine's).
environment = {
  TOQUE_STATE_DIR = "/var/lib/toque-fleet-example"
  TOQUE_HOST_LOCK = "/run/toque-fleet-example/apply.lock"
}

hosts = ["web-01", "web-02", "web-04", "db-01"]

# One web server with an attribute of its own: the plan shows it apart
# from the other web servers, which share one set of changes.
host "web-03" {
  attributes = {
    motd = { greeting = "Bonjour" }
  }
}

group "web" {
  hosts = ["web-*"]
  attributes = {
    motd = { role = "web server" }
  }
}

group "db" {
  hosts = ["db-*"]
  attributes = {
    motd = { role = "database" }
  }
}

# A canary first, then every other host.
rollout {
  batches      = [1, "100%"]
  max_failures = 0
  parallel     = 4
}
