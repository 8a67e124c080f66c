# File systems and protocols nothing may load (modprobe.yml): the role's
# list, less its whitelist, less vfat on an EFI machine, less what is
# mounted now. toque writes /etc/modprobe.d/disable_NAME.conf
# (`install NAME /bin/false`) for each, where the role writes one
# dev-sec.conf (`install NAME /bin/true`).
resource_group "modprobe" {
  only_if = node.os_hardening.enabled && node.os_hardening.modprobe_enabled

  package "kmod" {}

  kernel_module "unused" {
    for_each = setsubtract(
      setsubtract(node.os_hardening.unused_filesystems, node.os_hardening.filesystem_whitelist),
      concat(
        fileexists("/sys/firmware/efi/systab") ? ["vfat"] : [],
        flatten([for ms in values(node.etc.mounts) : ms[*].fstype]),
      ),
    )
    modname = each.key
    action  = "disable"
  }
}
