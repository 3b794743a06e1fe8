/**
 * The worker of the dashboard engine's host: the dashboard pages of the same settings start
 * this file under one host name and share it. The worker's name is the host's name.
 */
import { hostEngine } from '@tidemark/worker/host'
import { dashboardHostOptions } from './dashboardHost.ts'
import { workerHostPlatform } from './hostPlatform.ts'

hostEngine(dashboardHostOptions(self.name, workerHostPlatform()))
