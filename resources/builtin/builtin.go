package builtin

import (
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/accounts"
	"github.com/toquehq/toque/resources/commands"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/hcltype"
	"github.com/toquehq/toque/resources/packages"
	"github.com/toquehq/toque/resources/system"
	"github.com/toquehq/toque/resources/systemd"
	"github.com/toquehq/toque/resources/vcs"
)

// Registry returns a registry of toque's built-in resource types: file,
// template, directory, link, remote_file, execute and the script family
// (script, bash, sh, csh, python, perl, powershell_script), the host's
// packages (package, apt_repository, apt_update), user, group, cron_d,
// sysctl, mount, kernel_module, swap_file, hostname, timezone, locale,
// service and systemd_unit; it makes the types written in HCL with
// hcltype.New. Callers add further types by building their own
// registry; nothing registers itself.
func Registry() *resources.Registry {
	return resources.NewRegistry(Types()...).WithDefine(hcltype.New)
}

// Types lists the built-in types, in the order they are documented.
func Types() []resources.Type {
	return []resources.Type{
		files.FileType(), files.TemplateType(), files.DirectoryType(), files.LinkType(), files.RemoteFileType(),
		files.ArchiveFileType(),
		vcs.GitType(),
		packages.PackageType(), packages.AptRepositoryType(), packages.AptUpdateType(),
		commands.ExecuteType(), commands.ScriptType(), commands.BashType(), commands.ShType(), commands.CshType(), commands.PythonType(), commands.PerlType(), commands.PowerShellScriptType(),
		accounts.UserType(), accounts.GroupType(), system.CronDType(), system.SysctlType(),
		system.MountType(),
		system.KernelModuleType(),
		system.SwapFileType(),
		system.HostnameType(),
		system.TimezoneType(),
		system.LocaleType(),
		systemd.ServiceType(), systemd.SystemdUnitType(),
	}
}
