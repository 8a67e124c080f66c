// Package packages holds the built-in package, apt_repository and
// apt_update types. package reaches the host's package manager through
// the PackageProvider interface; the apt/dpkg provider (pkgprovider_apt.go)
// and Debian's version ordering (debversion.go) are the one implemented.
// A plan reads every package of the plan with one query and one policy
// call, and apply installs exactly the versions the plan names.
package packages
