# Managed by toque (examples/postgresql). Debian's defaults for the
# cluster's paths, then the role's options.
data_directory = '/var/lib/postgresql/${version}/${cluster}'
hba_file = '/etc/postgresql/${version}/${cluster}/pg_hba.conf'
ident_file = '/etc/postgresql/${version}/${cluster}/pg_ident.conf'
external_pid_file = '/var/run/postgresql/${version}-${cluster}.pid'
ssl = off
datestyle = 'iso, mdy'
timezone = 'Etc/UTC'
lc_messages = 'C.UTF-8'
default_text_search_config = 'pg_catalog.english'
include_dir = 'conf.d'
%{ for k, v in options ~}
${k} = ${v}
%{ endfor ~}
