file "myapp-version" {
  path    = "${node.base.root}/myapp-version"
  content = "mycookbook ${node.mycookbook.version}: ${node.mycookbook.greeting}\n"
  mode    = "0644"
}
