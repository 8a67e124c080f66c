server {
    listen ${port};
%{ if tls ~}
    listen 443 ssl;
    ssl_certificate ${cert};
%{ endif ~}
    server_name ${join(" ", concat([name], aliases))};
    root ${docroot};
}
