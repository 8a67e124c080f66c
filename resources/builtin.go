package resources

// Builtin returns a registry of toque's built-in resource types: file,
// template, directory, link, remote_file, execute and the script family
// (script, bash, sh, csh, python, perl, powershell_script), the host's
// packages (package, apt_repository, apt_update), user, group, cron_d,
// sysctl, service and systemd_unit; it makes the types written in HCL with
// NewCustomType. Callers add further types by building their own
// registry; nothing registers itself.
func Builtin() *Registry {
	return NewRegistry(BuiltinTypes()...).WithDefine(NewCustomType)
}

// BuiltinTypes lists the built-in types, in the order they are documented.
func BuiltinTypes() []Type {
	return []Type{
		FileType(), TemplateType(), DirectoryType(), LinkType(), RemoteFileType(),
		PackageType(), AptRepositoryType(), AptUpdateType(),
		ExecuteType(), ScriptType(), BashType(), ShType(), CshType(), PythonType(), PerlType(), PowerShellScriptType(),
		UserType(), GroupType(), CronDType(), SysctlType(),
		ServiceType(), SystemdUnitType(),
	}
}
