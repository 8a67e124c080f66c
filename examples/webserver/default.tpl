# Managed by toque (examples/webserver): changes here are undone by the
# next apply.
server {
	listen ${port} default_server;
	listen [::]:${port} default_server;

	root ${docroot};
	index index.html;

	server_name _;

	location / {
		try_files $uri $uri/ =404;
	}
}
