default "mycookbook" {
  version = "0.0.0" # the policy's default_attributes win over this
  greeting = "hello from mycookbook"
}
