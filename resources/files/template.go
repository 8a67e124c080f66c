package files

import (
	"context"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// templateType is the built-in "template" type: a file whose content is
// rendered from an HCL template. It is the file type with three more
// properties; loading, planning and converging are the file type's own.
type templateType struct {
	file   *fileType
	schema *resources.Schema
}

// TemplateType returns the built-in "template" resource type.
func TemplateType() resources.Type {
	f := FileType().(*fileType)
	props := make([]*resources.Property, 0, len(f.schema.Properties)+3)
	for _, p := range f.schema.Properties {
		if p.Name == "content" {
			c := *p
			c.Description = "The rendered template. Set by toque from source or content_template; a recipe does not set it."
			props = append(props, &c)
			continue
		}
		props = append(props, p)
	}
	props = append(props,
		&resources.Property{Name: "source", Type: cty.String, NonState: true,
			Description: "The template file (HCL template syntax: ${…}, %{ if }, %{ for }): relative paths are found in the cookbook's templates/ folder, or next to the recipe in directory mode."},
		&resources.Property{Name: "content_template", Type: cty.String, NonState: true,
			Description: "An inline template instead of source: its ${…} see the variables as well as node and host (a heredoc is the usual form)."},
		&resources.Property{Name: "variables", Type: cty.DynamicPseudoType, NonState: true,
			Validate:    validateVariables,
			Description: "A map (or object) of template variables, visible by name in the template besides node and host."},
	)
	return &templateType{file: f, schema: &resources.Schema{
		Name:          "template",
		Description:   "Manages a file whose content is rendered from an HCL template at plan time.",
		Properties:    props,
		Actions:       f.schema.Actions,
		DefaultAction: f.schema.DefaultAction,
	}}
}

func validateVariables(v cty.Value) error {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		return fmt.Errorf("variables must be a map or an object, not %s", t.FriendlyName())
	}
	for it := v.ElementIterator(); it.Next(); {
		k, _ := it.Element()
		switch name := k.AsString(); name {
		case "node", "host":
			return fmt.Errorf("a template variable may not be called %q: node and host are already visible in templates", name)
		}
	}
	return nil
}

func (t *templateType) Schema() *resources.Schema { return t.schema }

// TemplateProperties implements resources.Templated.
func (t *templateType) TemplateProperties() resources.TemplateProps {
	return resources.TemplateProps{Source: "source", Inline: "content_template", Variables: "variables", Content: "content"}
}

// Load is the file type's Load.
func (t *templateType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	// Always with the content: a template renders it (Load sees none when
	// it is known only at apply).
	return t.file.load(ctx, r, true)
}

// Plan and Steps are the file type's, on the rendered content.
func (t *templateType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	return t.file.Plan(action, desired, current)
}

func (t *templateType) Steps() resources.Steps { return t.file.Steps() }

func (t *templateType) StagePath(desired *resources.Resource) string {
	return t.file.StagePath(desired)
}

func (t *templateType) Stage(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) (resources.Staged, error) {
	return t.file.Stage(ctx, env, desired, current, step)
}
