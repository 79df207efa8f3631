module {
  func.func @sdsc_bundle() {
    sdscbundle.sdsc_execute () {sdsc_filename="abs_a.json"}
    return
  }
}
