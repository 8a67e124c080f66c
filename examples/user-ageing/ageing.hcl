# Every regular user's password ageing, as a hardening baseline asks
# (CIS: "ensure inactive password lock is 30 days or less"): the users
# are discovered on the host when the plan is made (data "users"), and
# each is a resource of its own, user[ageing]["alice"], whose plan shows
# the chage-level change (~ inactive = -1 -> 30).

default "hardening" {
  # Days after a password expires before the account is disabled
  # (chage -I).
  inactive_days = 30
  # Users the rule leaves alone (a break-glass account).
  ageing_exempt = []
}

# The local users (/etc/passwd, and /etc/shadow as root): a map by name.
# regular is login.defs' UID_MIN … UID_MAX: people, not system accounts.
data "users" "all" {}

user "ageing" {
  for_each = {
    for name, u in data.users.all.result : name => u
    if u.regular && !contains(node.hardening.ageing_exempt, name)
  }
  username = each.key
  inactive = node.hardening.inactive_days
  # manage: change a user that exists, never create one (the user may be
  # removed between the plan and the apply: then there is nothing to do).
  action = "manage"
}
