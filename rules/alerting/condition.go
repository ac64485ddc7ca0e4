package alerting

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// What one evaluation of a condition may use. A condition runs at every
// check, so one that could exhaust memory or run for minutes would take
// check and report down with it ('len(repeat(repeat("a", 100000),
// 100000)) > 0' asked for 10 GB). Real conditions compare a few numbers
// and labels and use none of this; the bounds are far above them and far
// below harm.
const (
	// MaxConditionNodes caps the size of a condition, in syntax nodes
	// ("value > threshold && denominator >= 20" has 7).
	MaxConditionNodes = 1000
	// MaxConditionItems caps the items of the ranges, lists and maps one
	// evaluation builds, together. Every loop (all, map, filter, ...) goes
	// over one of those, the labels, or what a text function returned
	// (split), so this and MaxConditionText also cap the work.
	MaxConditionItems = 10000
	// MaxConditionText caps the bytes of text one evaluation builds, with
	// + and the text functions (repeat, join, replace, upper, split, ...),
	// together.
	MaxConditionText = 1 << 20
)

// disabledInConditions are expr builtins a condition may not call: they
// build text whose size cannot be told before it is built, and no alert
// condition needs them.
var disabledInConditions = []string{"toJSON"}

// BudgetError is an evaluation that went past a condition's bounds.
type BudgetError struct{ Msg string }

func (e *BudgetError) Error() string { return "condition " + e.Msg }

// condition is a rule's compiled condition and the text its current
// evaluation has built. Its functions charge that budget, so evaluations
// of one condition take turns.
type condition struct {
	program *vm.Program
	mu      sync.Mutex
	text    int
}

// compileCondition compiles s for the rule's Env with its bounds; uses
// sees every identifier.
func compileCondition(s string, uses *identifiers) (*condition, error) {
	c := &condition{}
	opts := []expr.Option{expr.Env(Env{}), expr.AsBool(), expr.MaxNodes(MaxConditionNodes), expr.Patch(uses)}
	for _, name := range disabledInConditions {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	// Compiled once as written, for the checker's types and errors
	// ("expected bool, but got float64"), which + through add (typed any)
	// would hide; and once bounded, to run.
	if _, err := expr.Compile(s, opts...); err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			for _, name := range disabledInConditions {
				if fe.Message == "unknown name "+name {
					fe.Message = name + " is not available in conditions"
				}
			}
		}
		return nil, err
	}
	p, err := expr.Compile(s, append(opts, c.textFunctions()...)...)
	if err != nil {
		return nil, err
	}
	c.program = p
	return c, nil
}

// run evaluates the condition on env within its bounds. It never panics:
// the VM turns panics into errors, and so does this, in case.
func (c *condition) run(env Env) (out any, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("condition failed: %v", r)
		}
	}()
	c.text = 0
	machine := vm.VM{MemoryBudget: MaxConditionItems}
	out, err = machine.Run(c.program, env)
	if err == nil {
		return out, nil
	}
	var be *BudgetError
	if errors.As(err, &be) {
		return nil, be
	}
	var fe *file.Error
	if errors.As(err, &fe) && fe.Message == "memory budget exceeded" {
		return nil, &BudgetError{Msg: fmt.Sprintf("builds more than %d items in ranges, lists and maps in one evaluation", MaxConditionItems)}
	}
	return nil, err
}

// charge counts n more bytes of text built, refusing past the budget.
func (c *condition) charge(n int) error {
	if n < 0 || n > MaxConditionText-c.text {
		return &BudgetError{Msg: fmt.Sprintf("builds more than %d bytes (1 MiB) of text in one evaluation", MaxConditionText)}
	}
	c.text += n
	return nil
}

// textBuiltins are expr's builtins that build text or lists from text.
var textBuiltins = []string{"repeat", "join", "replace", "string", "toBase64", "upper", "lower", "trim",
	"trimPrefix", "trimSuffix", "split", "splitAfter", "fromBase64", "fromJSON", "toPairs", "fromPairs", "keys", "values"}

// textFunctions replace expr's builtins that build text, and +, with ones
// that charge the text budget: before building, when the size can be
// told (repeat, join, replace, +), or after, for those whose result is at
// most a few times their input's (upper, split, ...), which bounds the
// total all the same.
func (c *condition) textFunctions() []expr.Option {
	var opts []expr.Option
	before := map[string]func(args []any) (int, error){
		"repeat":   repeatSize,
		"join":     joinSize,
		"replace":  replaceSize,
		"string":   stringSize,
		"toBase64": func(args []any) (int, error) { return base64.StdEncoding.EncodedLen(len(args[0].(string))), nil },
	}
	for _, name := range textBuiltins {
		i, ok := builtin.Index[name]
		if !ok {
			continue // not in this version of expr; TestTextBuiltinsExist says so
		}
		b := builtin.Builtins[i]
		size := before[name]
		fn := func(args ...any) (any, error) {
			if size != nil {
				n, err := size(args)
				if err != nil {
					return nil, err
				}
				if err := c.charge(n); err != nil {
					return nil, err
				}
			}
			var out any
			var err error
			switch {
			case b.Func != nil:
				out, err = b.Func(args...)
			case b.Fast != nil:
				out = b.Fast(args[0])
			default:
				out, _, err = b.Safe(args...)
			}
			if err != nil || size != nil {
				return out, err
			}
			return out, c.charge(sizeOf(out))
		}
		types := make([]any, len(b.Types))
		for i, t := range b.Types {
			types[i] = reflect.New(t).Interface()
		}
		opts = append(opts, expr.Function(name, fn, types...))
	}
	// Every + goes through add: the checker's types are not always the
	// values' (in reduce, #acc is typed as the list's items whatever it
	// holds), so text joined with + is charged whatever the types say.
	opts = append(opts, expr.Function("add", c.add, new(func(any, any) any)), expr.Operator("+", "add"))
	return opts
}

func (c *condition) add(args ...any) (any, error) {
	if a, ok := args[0].(string); ok {
		if b, ok := args[1].(string); ok {
			if err := c.charge(len(a) + len(b)); err != nil {
				return nil, err
			}
			return a + b, nil
		}
	}
	return runtime.Add(args[0], args[1]), nil
}

func repeatSize(args []any) (int, error) {
	s, n := args[0].(string), runtime.ToInt(args[1])
	if n < 0 {
		return 0, fmt.Errorf("repeat: negative count %d", n)
	}
	if n > 0 && len(s) > MaxConditionText/n {
		return MaxConditionText + 1, nil // past the budget, without overflowing
	}
	return len(s) * n, nil
}

func joinSize(args []any) (int, error) {
	glue := ""
	if len(args) == 2 {
		glue = args[1].(string)
	}
	n := 0
	add := func(s string) {
		if n <= MaxConditionText {
			n += len(s) + len(glue)
		}
	}
	switch list := args[0].(type) {
	case []string:
		for _, s := range list {
			add(s)
		}
	case []any:
		for _, v := range list {
			s, ok := v.(string)
			if !ok {
				return 0, fmt.Errorf("join: %T is not text", v)
			}
			add(s)
		}
	}
	return n, nil
}

func replaceSize(args []any) (int, error) {
	s, old, repl := args[0].(string), args[1].(string), args[2].(string)
	count := strings.Count(s, old)
	if len(args) == 4 {
		if limit := runtime.ToInt(args[3]); limit >= 0 {
			count = min(count, limit)
		}
	}
	grow := len(repl) - len(old)
	if grow > 0 && count > 0 && grow > MaxConditionText/count {
		return MaxConditionText + 1, nil
	}
	return len(s) + count*max(grow, 0), nil
}

// stringSize allows string() of a scalar only: a list's text could be
// far larger than anything the budget has seen.
func stringSize(args []any) (int, error) {
	switch v := args[0].(type) {
	case nil, bool, int, int64, float64, float32:
		return 24, nil
	case string:
		return len(v), nil
	}
	return 0, fmt.Errorf("string() takes a number, a boolean or text in conditions, not %T", args[0])
}

// sizeOf is roughly the bytes a text function's result took.
func sizeOf(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []string:
		n := 16 * len(v)
		for _, s := range v {
			n += len(s)
		}
		return n
	case []any:
		return 16 * len(v)
	case map[string]any:
		return 48 * len(v)
	}
	return 16
}
