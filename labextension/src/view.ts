/**
 * Pure view logic of the Workflow panel: snapshot -> what to show.
 *
 * Everything here is a plain function of the snapshot (and, for the controls, the FSM
 * table), so it is unit-tested under node without a browser or JupyterLab. The widget only
 * turns these view models into DOM.
 *
 * The logic lives in one module per panel section; this module re-exports them all so the
 * panel, the other modules and the unit tests keep importing from ``./view``.
 */
export * from './viewPlan';
export * from './viewBehavior';
export * from './viewDecisions';
export * from './viewTimeline';
