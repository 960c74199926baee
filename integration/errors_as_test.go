package integration

import "errors"

func errorAs(err error, target any) bool { return err != nil && errors.As(err, target) }
