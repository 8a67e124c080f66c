// Package packages holds the built-in package, apt_repository,
// apt_update, yum_repository and dnf_makecache types. package reaches the
// host's package manager through the PackageProvider interface: apt and
// dpkg (pkgprovider_apt.go, Debian's version ordering in debversion.go)
// and dnf and rpm (pkgprovider_dnf.go, rpm's ordering in rpmversion.go),
// chosen from os-release or by the provider property
// (pkgprovider_select.go). A plan reads every package of a provider with
// one query and one read of the repositories, and apply installs exactly
// the versions the plan names.
//
// It is not a package manager: it never resolves dependencies, downloads
// packages or edits a package database itself; it reads what the package
// manager says and runs it.
package packages
