// Package accounts holds the built-in user and group types, and
// authorized_keys (a key in a user's ~/.ssh/authorized_keys, reached
// through the held directories of resources/files). User and group read
// passwd, group, shadow, gshadow and login.defs in one pass per plan
// (shadowdb.go) and converge with the shadow tools (useradd, usermod,
// userdel, chpasswd, groupadd, groupmod, groupdel, gpasswd), never by
// editing the databases themselves. A password reaches chpasswd on its
// standard input, never on a command line.
package accounts
