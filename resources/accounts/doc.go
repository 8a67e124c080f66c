// Package accounts holds the built-in user and group types. They read
// passwd, group, shadow, gshadow and login.defs in one pass per plan
// (shadowdb.go) and converge with the shadow tools (useradd, usermod,
// userdel, chpasswd, groupadd, groupmod, groupdel, gpasswd), never by
// editing the databases themselves. A password reaches chpasswd on its
// standard input, never on a command line.
package accounts
