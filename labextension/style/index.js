import './base.css';
import './nav.css';
