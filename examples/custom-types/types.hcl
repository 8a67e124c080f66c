# Two resource types written in HCL (see docs/resource-authors.md).
#
# kv_setting manages one key of a "key = value" file with nothing but
# load_current_value and converge_if_changed: the seed's converge model.
# web_site is composed of child resources (a directory, a template, a
# file, a link), a converge_by and a notification between its children.

resource_type "kv_setting" {
  description = "One key of a key = value file; the other lines are left as they are."

  property "key" {
    type          = string
    name_property = true
    regex         = "^[A-Za-z0-9_.-]+$"
    description   = "The key; defaults to the block label."
  }
  property "path" {
    type        = string
    identity    = true
    description = "Absolute path of the file."
    validation {
      condition     = startswith(value, "/")
      error_message = "path must be absolute, not ${value}"
    }
  }
  property "value" {
    type        = string
    description = "The key's value."
  }

  # Reads the one key: its value, or {"exists": false} when the file or the
  # key is missing (Chef's current_value_does_not_exist!). It gets the key
  # and the path (identity properties), never the value.
  load_current_value {
    code = <<-EOT
      f="$PROP_PATH"
      if [ ! -f "$f" ]; then echo '{"exists": false}'; exit 0; fi
      awk '
        BEGIN { k = ENVIRON["PROP_KEY"] }
        index($0, "=") > 0 {
          key = substr($0, 1, index($0, "=") - 1); gsub(/^[ \t]+|[ \t]+$/, "", key)
          if (key == k) {
            v = substr($0, index($0, "=") + 1); gsub(/^[ \t]+|[ \t]+$/, "", v)
            gsub(/\\/, "\\\\", v); gsub(/"/, "\\\"", v)
            printf "{\"value\": \"%s\"}\n", v; found = 1; exit
          }
        }
        END { if (!found) print "{\"exists\": false}" }' "$f"
    EOT
  }

  action "create" {
    # Runs only when the value the recipe sets differs from the file's (or
    # the key is missing), and rewrites that one line: every other line,
    # the file's mode and owner stay as they are.
    converge_if_changed {
      code = <<-EOT
        f="$PROP_PATH"
        touch "$f"
        tmp="$f.toque-ini"
        awk '
          BEGIN { k = ENVIRON["PROP_KEY"]; v = ENVIRON["PROP_VALUE"] }
          index($0, "=") > 0 && !done {
            key = substr($0, 1, index($0, "=") - 1); gsub(/^[ \t]+|[ \t]+$/, "", key)
            if (key == k) { print k " = " v; done = 1; next }
          }
          { print }
          END { if (!done) print k " = " v }' "$f" > "$tmp"
        cat "$tmp" > "$f" && rm -f "$tmp"
      EOT
    }
  }
}

resource_type "web_site" {
  description = "A static site: its document root, configuration, start page and the current link."

  property "name" {
    type          = string
    name_property = true
    regex         = "^[a-z0-9-]+$"
  }
  property "root" {
    type          = string
    desired_state = false
    description   = "The directory the sites live under."
  }
  property "port" {
    type          = number
    default       = 8080
    desired_state = false
    validation {
      condition     = value > 1024 && value < 65536
      error_message = "port ${value} is not an unprivileged port"
    }
  }
  property "title" {
    type          = string
    default       = "A toque site"
    desired_state = false
  }

  # The site exists when its document root does.
  load_current_value {
    code = <<-EOT
      if [ -d "$PROP_ROOT/sites/$PROP_NAME" ]; then echo '{}'; else echo '{"exists": false}'; fi
    EOT
  }

  action "create" {
    directory "docroot" {
      path      = "${new_resource.root}/sites/${new_resource.name}"
      recursive = true
    }
    template "conf" {
      path   = "${new_resource.root}/sites/${new_resource.name}.conf"
      source = "site.conf.tpl"
      variables = {
        name = new_resource.name
        port = new_resource.port
        root = "${new_resource.root}/sites/${new_resource.name}"
      }
      notifies "run" {
        resource = "execute[reload]" # a sibling: declared in this action too
      }
    }
    file "index" {
      path    = "${new_resource.root}/sites/${new_resource.name}/index.html"
      content = "<h1>${new_resource.title}</h1>\n"
    }
    link "current" {
      target_file = "${new_resource.root}/current"
      to          = "${new_resource.root}/sites/${new_resource.name}"
    }
    # Runs when the site is created (it did not exist when planned).
    converge_by "record the site's creation" {
      when = "absent"
      code = "date -u +%FT%TZ > \"$PROP_ROOT/sites/$PROP_NAME/created\""
    }
    execute "reload" {
      command = "echo \"reload ${new_resource.name}\" >> ${new_resource.root}/reload.log"
      action  = "nothing"
    }
  }
}
