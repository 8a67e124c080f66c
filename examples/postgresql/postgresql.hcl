# postgresql: Debian's PostgreSQL 15 on a fresh host, in ONE plan and ONE
# apply — a port of the published geerlingguy.postgresql role (and of
# what the sous-chefs postgresql cookbook does) for Debian 12.
#
# NEEDS ROOT AND CHANGES THE HOST: it installs packages from Debian's
# repositories, creates a database cluster, and starts PostgreSQL. Debian
# 12 (bookworm) only. Try it in a throwaway container (README.md).
#
#   toque -chdir=examples/postgresql plan -out=/tmp/pg.plan
#   toque apply /tmp/pg.plan
#   toque -chdir=examples/postgresql plan     # No changes.

default "postgresql" {
  version = "15"
  cluster = "main"
  port    = 5432
  # The role's postgresql_global_config_options.
  options = {
    listen_addresses        = "'localhost'"
    port                    = 5432
    max_connections         = 100
    shared_buffers          = "128MB"
    log_directory           = "'log'"
    unix_socket_directories = "'/var/run/postgresql'"
    password_encryption     = "scram-sha-256"
  }
  # The role's postgresql_hba_entries.
  hba = [
    { type = "local", database = "all", user = "postgres", address = "", method = "peer" },
    { type = "local", database = "all", user = "all", address = "", method = "peer" },
    { type = "host", database = "all", user = "all", address = "127.0.0.1/32", method = "scram-sha-256" },
    { type = "host", database = "all", user = "all", address = "::1/128", method = "scram-sha-256" },
  ]
  databases = ["example_db"]
  # name => the databases it owns
  users = { example_user = "example_db" }
}

# No cluster from the packages' maintainer scripts: toque makes it, so
# that the plan shows every file of its configuration. (postgresql-common
# makes createcluster.conf with ucf, which keeps a file that is there.)
directory "/etc/postgresql-common" {}
file "/etc/postgresql-common/createcluster.conf" {
  content = "# Managed by toque: the cluster is made by examples/postgresql.\ncreate_main_cluster = false\n"
}

package "postgresql" {
  package_name = ["postgresql-${node.postgresql.version}", "postgresql-contrib", "libpq-dev"]
}

# The cluster's configuration, as pg_createcluster would write it, but
# every file planned: the directory, the server's options, who may
# connect, and what pg_ctlcluster reads.
directory "cluster etc" {
  for_each  = toset(["/etc/postgresql/${node.postgresql.version}/${node.postgresql.cluster}", "/etc/postgresql/${node.postgresql.version}/${node.postgresql.cluster}/conf.d"])
  path      = each.key
  owner     = "postgres"
  group     = "postgres"
  recursive = true
}

template "postgresql.conf" {
  path   = "/etc/postgresql/${node.postgresql.version}/${node.postgresql.cluster}/postgresql.conf"
  source = "postgresql.conf.tpl"
  variables = {
    version = node.postgresql.version
    cluster = node.postgresql.cluster
    options = node.postgresql.options
  }
  owner = "postgres"
  group = "postgres"
  mode  = "0644"
  notifies "restart" {
    resource = "service[postgresql]"
  }
}

template "pg_hba.conf" {
  path      = "/etc/postgresql/${node.postgresql.version}/${node.postgresql.cluster}/pg_hba.conf"
  source    = "pg_hba.conf.tpl"
  variables = { entries = node.postgresql.hba }
  owner     = "postgres"
  group     = "postgres"
  mode      = "0640"
  notifies "reload" {
    resource = "service[postgresql]"
  }
}

file "cluster files" {
  for_each = {
    "pg_ident.conf" = "# MAPNAME SYSTEM-USERNAME PG-USERNAME\n"
    "start.conf"    = "auto\n"
    "pg_ctl.conf"   = "pg_ctl_options = ''\n"
    "environment"   = ""
  }
  path    = "/etc/postgresql/${node.postgresql.version}/${node.postgresql.cluster}/${each.key}"
  content = each.value
  owner   = "postgres"
  group   = "postgres"
  mode    = "0644"
}

# The data directory, made once by initdb as postgres.
directory "data" {
  path      = "/var/lib/postgresql/${node.postgresql.version}/${node.postgresql.cluster}"
  owner     = "postgres"
  group     = "postgres"
  mode      = "0700"
  recursive = true
}

execute "initdb" {
  command = ["/usr/lib/postgresql/${node.postgresql.version}/bin/initdb", "--pgdata", "/var/lib/postgresql/${node.postgresql.version}/${node.postgresql.cluster}", "--auth-local", "peer", "--auth-host", "scram-sha-256", "--encoding", "UTF8", "--locale", "C.UTF-8"]
  user    = "postgres"
  creates = "/var/lib/postgresql/${node.postgresql.version}/${node.postgresql.cluster}/PG_VERSION"
}

service "postgresql" {
  service_name = "postgresql@${node.postgresql.version}-${node.postgresql.cluster}"
  action       = ["enable", "start"]
}

# The role's postgresql_users and postgresql_databases: psql as postgres,
# guarded by the catalogue. The server starts during the apply, so the
# guards are decided then (lazy): the plan says what they say now.
execute "role" {
  for_each = node.postgresql.users
  command  = ["psql", "-v", "ON_ERROR_STOP=1", "-c", "CREATE ROLE \"${each.key}\" LOGIN"]
  user     = "postgres"
  not_if   = lazy("psql -tAc \"SELECT 1 FROM pg_roles WHERE rolname = '${each.key}'\" | grep -qx 1")
}

execute "database" {
  for_each = node.postgresql.users
  command  = ["createdb", "--owner", each.key, each.value]
  user     = "postgres"
  not_if   = lazy("psql -tAc \"SELECT 1 FROM pg_database WHERE datname = '${each.value}'\" | grep -qx 1")
}
