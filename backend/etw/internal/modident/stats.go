package modident

// Counter names of module facts and identities (package etw exports them
// as its StatModules… and StatIdentity… names).
const (
	StatModules          = "etw: modules (images loaded or running)"
	StatModulesPDB       = "etw: modules with their PDB identity (GUID, age, name)"
	StatModulesNoPDB     = "etw: modules without a PDB identity (the trace has no ImageID/DbgID_RSDS or iotrace image records for them): frames in them cannot be named from a PDB"
	StatIdentityNoImage  = "etw: image identity records without their image (ImageID, DbgID_RSDS, iotrace image)"
	StatRundownEndKnown  = "etw: image rundowns at trace end for modules already known (not repeated)"
	StatIdentityConflict = "etw: image identity records that disagree with an earlier one for the same image (first kept)"
	StatIdentityMismatch = "etw: iotrace image identity records whose image at that process and base differs (PE time stamp, size or file name): not used"
)
