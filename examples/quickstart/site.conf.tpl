# Written by toque. Edits are replaced on the next apply.
listen ${port}
root   ${root}/www
%{ for ext in ["html", "css"] ~}
serve  *.${ext}
%{ endfor ~}
