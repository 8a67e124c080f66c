package resources

import (
	"github.com/zclconf/go-cty/cty"
)

// Deriver is implemented by a type whose recipe-facing properties are
// the parts of one thing it manages whole: cron_d's schedule, command and
// environment make one crontab file. Derive computes the managed values
// (the file's content, mode and owner) from the decoded properties when
// the recipe is evaluated, so that the plan holds, diffs and applies
// exactly what apply writes, and Load, Plan and Converge see them as set
// values.
//
// values holds the set properties, normalised and validated; some may be
// unknown (validate knows no host facts): a derived value that depends on
// one is unknown too. The evaluator stores every returned value over
// values, and marks them sensitive when any set property is. A property
// Derive fills in is not one the recipe may set: its Validate should say
// so. Derive must be pure.
type Deriver interface {
	Type
	Derive(values map[string]cty.Value) (map[string]cty.Value, error)
}
