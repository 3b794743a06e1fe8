/** What the recipe samples show the user; the tests read it back. */
export interface Screen {
  banner: string
  error: string
}
