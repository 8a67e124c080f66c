// Package systemd holds the built-in service and systemd_unit types. They
// read every unit of a plan with one systemctl show, act through the
// initSystem interface (systemd is its one implementation), verify unit
// files with systemd-analyze at plan, and defer one daemon-reload per
// apply (resources.Later).
package systemd
