package dbghelp

// New returns a Resolver over this system's dbghelp.dll (Windows on
// amd64 and arm64; elsewhere every module's outcome is Failed, with the
// reason).
func New(opts Options) *Resolver { return NewWith(opts, openAPI) }
