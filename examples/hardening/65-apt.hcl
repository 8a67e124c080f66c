# apt.yml: packages with known security issues, purged.
package "insecure" {
  only_if      = node.os_hardening.enabled && node.os_hardening.apt_enabled && node.os_hardening.security_packages_clean
  package_name = node.os_hardening.security_packages_list
  action       = "purge"
}
