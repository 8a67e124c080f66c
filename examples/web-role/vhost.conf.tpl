server {
    listen ${port};
    server_name ${join(" ", concat([name], aliases))};
    root ${docroot};
}
