# The role's attributes: what a host that takes this role may set, with
# their defaults. A role's default is no site at all: give the sites with
# -attr-file (envs/one.attrs, envs/three.attrs) or -attr.
default "web" {
  # Everything lives under a scratch directory: no root needed.
  root = env("WEB_ROLE_ROOT", "/tmp/toque-web-role")

  # The port a site listens on when it names none.
  listen = 8080

  # The sites: NAME = { port = …, aliases = […] }, both optional.
  vhosts = {}

  # The hardening baseline (hardening.hcl): on unless a host turns it off.
  hardening = true
}
