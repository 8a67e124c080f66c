directory "base-root" {
  path = node.base.root
  mode = "0755"
}

file "base-conf" {
  path = "${node.base.root}/base.conf"
  # Relative paths in a cookbook resolve against the cookbook's root.
  content = templatefile("templates/base.conf.tpl", node.base_config)
  mode    = "0644"
}
