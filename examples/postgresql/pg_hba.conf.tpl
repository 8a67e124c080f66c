# Managed by toque (examples/postgresql).
# TYPE  DATABASE  USER  ADDRESS  METHOD
%{ for e in entries ~}
${e.type} ${e.database} ${e.user} ${e.address} ${e.method}
%{ endfor ~}
