# RFC 011, the powershell_script examples. The RFC's Windows commands
# (New-SmbShare, Set-ExecutionPolicy) are replaced by files under
# GUARDS_ROOT so that the examples run with pwsh anywhere.
default "guards" {
  root = env("GUARDS_ROOT", "/tmp/toque-guards")
}

directory "root" {
  path = node.guards.root
}

# The fix for CHEF-4553: the guard runs in PowerShell, not sh. Get-Item
# fails (a non-zero exit) while the "share" does not exist.
powershell_script "defaultguard" {
  guard_interpreter = "powershell_script"
  code              = "New-Item -ItemType File -Force -Path '${node.guards.root}/systemshare' | Out-Null"
  not_if            = "Get-Item -ErrorAction Stop '${node.guards.root}/systemshare'"
}

# Boolean behaviour: the guard's PowerShell bool is its verdict
# (convert_boolean_return is forced on for guards).
powershell_script "set execution policy" {
  guard_interpreter = "powershell_script"
  code              = "Set-Content -Path '${node.guards.root}/executionpolicy' -Value remotesigned"
  not_if            = "(Get-Content -ErrorAction SilentlyContinue '${node.guards.root}/executionpolicy') -eq 'remotesigned'"
}

# architecture is inherited by the guard (recorded in the plan; it selects
# the process architecture on Windows only).
powershell_script "set i386 execution policy" {
  guard_interpreter = "powershell_script"
  architecture      = "i386"
  code              = "Set-Content -Path '${node.guards.root}/executionpolicy-i386' -Value remotesigned"
  not_if            = "(Get-Content -ErrorAction SilentlyContinue '${node.guards.root}/executionpolicy-i386') -eq 'remotesigned'"
}
