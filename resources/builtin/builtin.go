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

// Registry returns a registry of toque's built-in resource types — the
// files family (file, template, directory, link, remote_file, the editors
// file_line, file_block and ini_setting, archive_file), git, the packages
// family (package, apt_repository, apt_update), execute and the script
// types, the accounts family (user, group, authorized_keys), the system
// family (cron_d, sysctl, mount, kernel_module, swap_file, hostname,
// timezone, locale, alternatives, sudo, ssh_known_hosts_entry), service and
// systemd_unit — and of its data sources (DataSources), and makes the
// types written in HCL with hcltype.New. Callers add further types by
// building their own registry; nothing registers itself.
func Registry() *resources.Registry {
	return resources.NewRegistry(Types()...).WithData(DataSources()...).WithDefine(hcltype.New)
}

// DataSources lists the built-in data sources (data blocks), in the order
// they are documented: exec, users, groups, packages, mounts, files.
func DataSources() []resources.DataSource {
	return []resources.DataSource{
		commands.ExecData(),
		accounts.UsersData(), accounts.GroupsData(),
		packages.PackagesData(),
		system.MountsData(),
		files.FilesData(),
	}
}

// Types lists the built-in types, in the order they are documented.
func Types() []resources.Type {
	return []resources.Type{
		files.BuiltinFileType(), files.TemplateType(), files.DirectoryType(), files.LinkType(), files.RemoteFileType(),
		files.FileLineType(), files.FileBlockType(), files.IniSettingType(),
		files.ArchiveFileType(),
		vcs.GitType(),
		packages.PackageType(), packages.AptRepositoryType(), packages.AptUpdateType(),
		packages.YumRepositoryType(), packages.DnfMakecacheType(),
		commands.ExecuteType(), commands.ScriptType(), commands.BashType(), commands.ShType(), commands.CshType(), commands.PythonType(), commands.PerlType(), commands.PowerShellScriptType(),
		accounts.UserType(), accounts.GroupType(), accounts.AuthorizedKeysType(), system.CronDType(), system.SysctlType(),
		system.MountType(),
		system.KernelModuleType(),
		system.SwapFileType(),
		system.HostnameType(),
		system.TimezoneType(),
		system.LocaleType(),
		system.AlternativesType(),
		system.SudoType(),
		system.SSHKnownHostsEntryType(),
		systemd.ServiceType(), systemd.SystemdUnitType(),
	}
}
