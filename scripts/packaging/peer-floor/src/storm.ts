import { test } from '@playwright/test'
import { runStorm } from '@tidemark/storm'
import { beginStormPage } from '@tidemark/storm/page'

export const storm = { test, runStorm, beginStormPage }
