# The example's repository: the directory build-repo.sh made. trusted =
# true accepts it unsigned, which is right only for a repository you
# control; a real one names its key (key = "https://…", checksum = "…").
apt_repository "toque-example" {
  uri          = "file:${env("TOQUE_EXAMPLE_REPO", "/var/tmp/toque-example-repo")}"
  distribution = "./"
  trusted      = true

  # apt learns what the repository offers only when its lists are
  # updated: a changed repository notifies apt_update.
  notifies "update" {
    resource = "apt_update[lists]"
    timing   = "immediately"
  }
}

apt_update "lists" {
  action = "nothing" # runs only when notified
}

# The package the repository offers. Until the repository is configured
# and its lists read, what apt would install cannot be known at plan time:
# the plan shows its version as known at apply, waiting for the update the
# repository notifies above, and apply reads and plans it again right
# before installing it, in the same apply.
package "toque-hello" {}

# A package from the distribution's own repositories would be declared the
# same way, with or without a pinned version:
#
# package "nginx" {
#   version = "1.22.1-9"
# }
