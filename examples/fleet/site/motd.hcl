# What every host of examples/fleet converges to: a message of the day
# under /srv/fleet-example, made from the inventory's attributes.
default "motd" {
  greeting = "Hello"
  role     = "host"
}

directory "dir" {
  path = "/srv/fleet-example"
  mode = "0755"
}

file "motd" {
  path    = "/srv/fleet-example/motd"
  content = "${node.motd.greeting} from a ${node.motd.role}.\n"
  mode    = "0644"
}
